"""What ``lookout doctor`` and every benchmark say of the CPU: its model and the
instruction sets that decide how fast the detector runs at each precision."""

from __future__ import annotations

from pathlib import Path

from models.cpu import read_cpu

X86 = """processor\t: 0
model name\t: AMD EPYC 9B14
flags\t\t: fpu sse4_2 avx avx2 fma f16c avx512f avx512bw avx512_vnni avx512_bf16 rdrand
"""
PI4 = """processor\t: 0
BogoMIPS\t: 108.00
Features\t: fp asimd evtstrm crc32 cpuid
Model\t\t: Raspberry Pi 4 Model B Rev 1.4
"""
PI5 = """processor\t: 0
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimddp
"""


def test_an_x86_with_vnni_and_bf16_is_said_to_gain_most_from_int8(tmp_path: Path) -> None:
    (tmp_path / "cpuinfo").write_text(X86)
    cpu = read_cpu(tmp_path / "cpuinfo")
    assert cpu.model == "AMD EPYC 9B14"
    assert "avx512_vnni avx512_bf16" in cpu.describe() and "rdrand" not in cpu.describe()
    said = cpu.for_the_detector()
    assert said.startswith("int8 has dot-product instructions (avx512_vnni)")
    assert said.endswith("bf16/fp16 arithmetic (avx512_bf16): OpenVINO computes in it")


def test_a_pi_4_has_no_int8_dot_product_and_a_pi_5_has_it_and_fp16(tmp_path: Path) -> None:
    (tmp_path / "pi4").write_text(PI4)
    (tmp_path / "pi5").write_text(PI5)
    pi4, pi5 = read_cpu(tmp_path / "pi4"), read_cpu(tmp_path / "pi5")
    assert pi4.for_the_detector() == "no int8 dot-product instructions: int8 gains less here"
    assert "flags: asimd" in pi4.describe()
    assert pi5.for_the_detector() == (
        "int8 has dot-product instructions (asimddp); "
        "bf16/fp16 arithmetic (asimdhp, fphp): OpenVINO computes in it"
    )
