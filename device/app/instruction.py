"""What the model is told and may see: the built-in system instruction, whether it is
offered ``look``, and whose frames it is sent (``--send-frames``).

A device with one unnamed camera is described as it always was. Where the device names
its cameras, the instruction names them, says that every camera tool takes ``camera``
and which lines and zones are whose; the model is sent one camera's frames at most (the
one ``--send-frames`` names; the flag alone, with one camera, that one), never a camera's
in privacy mode.
"""

from __future__ import annotations

from device.app.scene.tools import scene_editable
from device.config import Config, ConfigError

SYSTEM_INSTRUCTION = (
    "You are Lookout, a camera agent. Call count_people once at the start and keep it "
    "running: it reports the number of people in view whenever it changes. When it "
    "reports a change, say briefly how many people are in view now. Do not describe "
    "people's appearance unless asked. Use stop_streaming(function_name='count_people') when asked "
    "to stop counting, and count_people_now for the count at this moment."
)

CAMERAS_INSTRUCTION = (
    "You are Lookout, an agent of {n} cameras: {names}. Every tool about a camera takes "
    "camera, its name. Call count_people once for each camera at the start and keep them "
    "running: each reports the number of people in view of its camera whenever it changes, "
    "and says its camera. When one reports a change, say briefly whose and how many people "
    "are in view there now. Do not describe people's appearance unless asked. Use "
    "stop_streaming(function_name='count_people') when asked to stop counting, and "
    "count_people_now with the camera for its count at this moment."
)

LOOK_INSTRUCTION = (
    " You cannot see the camera unless you call look: it shows you the newest frame, "
    "with the people counted boxed and numbered, just before its answer. Look when a "
    "count change needs explaining, or when asked what people wear or do or what "
    "something looks like; never to count (count_people is cheaper). You may look only "
    "a few times a minute."
)

VOICE_INSTRUCTION = (
    " People near the device can talk to you through its microphone: answer them "
    "briefly and plainly, in their language."
)


def offers_look(config: Config) -> bool:
    """Whether the model is given the look tool: never in privacy mode (no image leaves
    the device, so the model is not offered one), nor with ``look_per_minute`` 0."""
    return not config.device.privacy and config.model.look_per_minute > 0


def frames_camera(config: Config) -> str | None:
    """The camera whose frames go to the model (None: none go). Raises ConfigError when
    ``--send-frames`` names no camera of the device, or several could be meant."""
    asked = config.model.send_frames
    if asked is False:
        return None
    names = config.camera_names
    spelled = config.given("send_frames") or "send_frames"
    if asked is True:
        if len(names) > 1:
            raise ConfigError(
                f"{spelled}: say whose frames go to the model, one camera's name "
                f"(cameras: {', '.join(names)})"
            )
        camera = names[0]
    elif asked in names:
        camera = asked
    else:
        raise ConfigError(f"{spelled}: no camera named {asked!r} (cameras: {', '.join(names)})")
    # A camera in privacy mode is never sent, whoever asks.
    return None if config.camera(camera).device.privacy else camera


def system_instruction(config: Config) -> str:
    """The built-in instruction, naming the cameras (where they are named), the configured
    lines and zones (and look, when the model is offered it)."""
    if not config.named_cameras:
        return _instruction(config, SYSTEM_INSTRUCTION, _scene(config))
    names = config.camera_names
    text = CAMERAS_INSTRUCTION.format(n=len(names), names=", ".join(names))
    views = [config.camera(name) for name in names]
    scene = _scene_of_cameras(views)
    private = [view.camera_name for view in views if view.device.privacy]
    if private and any(offers_look(view) for view in views):
        scene += f" Looking at {_and(private)} is refused: privacy mode."
    sent = frames_camera(config)
    if sent is not None:
        scene += f" The frames you are sent are camera {sent}'s."
    return _instruction(config, text, scene, looks=any(offers_look(view) for view in views))


def _instruction(config: Config, text: str, scene: str, *, looks: bool | None = None) -> str:
    if offers_look(config) if looks is None else looks:
        text += LOOK_INSTRUCTION
    if config.audio.mic is not None and not config.device.privacy:
        text += VOICE_INSTRUCTION
    text += scene
    if scene_editable(config):
        text += (
            " Lines and zones may be drawn, renamed or removed on the device's status page "
            "while you run: watch_line and watch_zone take a name drawn later too, and a "
            "watch whose line or zone goes says so once and ends."
        )
    return text


def _scene(config: Config) -> str:
    text = ""
    if config.scene.lines:
        names = ", ".join(config.scene.lines)
        text += (
            f" The device counts people crossing these lines: {names}. Call watch_line for "
            "each at the start and keep them running: each reports the run's in and out "
            "totals after a crossing. Say the totals when asked how many came in or went "
            "out; do not announce every crossing."
        )
    if config.scene.zones:
        text += (
            f" It watches these zones: {_zones(config)}. Call watch_zone for each at the "
            "start and keep them running; say when someone has stayed longer than the dwell "
            "time."
        )
    return text


def _scene_of_cameras(views: list[Config]) -> str:
    """Each camera's lines and zones, said as its own."""
    text = ""
    lines = [f"{', '.join(v.scene.lines)} ({v.camera_name})" for v in views if v.scene.lines]
    if lines:
        text += (
            f" The device counts people crossing these lines: {'; '.join(lines)}. Call "
            "watch_line with the camera and the line's name for each at the start and keep "
            "them running: each reports the run's in and out totals after a crossing. Say "
            "the totals when asked how many came in or went out; do not announce every "
            "crossing."
        )
    zones = [f"{_zones(v)} ({v.camera_name})" for v in views if v.scene.zones]
    if zones:
        text += (
            f" It watches these zones: {'; '.join(zones)}. Call watch_zone with the camera "
            "and the zone's name for each at the start and keep them running; say when "
            "someone has stayed longer than the dwell time."
        )
    return text


def _zones(config: Config) -> str:
    return ", ".join(
        f"{name} (dwell {spec.dwell if spec.dwell is not None else config.scene.dwell:g} s)"
        for name, spec in config.scene.zones.items()
    )


def _and(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


__all__ = [
    "CAMERAS_INSTRUCTION",
    "LOOK_INSTRUCTION",
    "SYSTEM_INSTRUCTION",
    "VOICE_INSTRUCTION",
    "frames_camera",
    "offers_look",
    "system_instruction",
]
