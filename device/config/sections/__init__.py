"""The settings, one model per concern (``base``: what every section shares): the live
model and voice (``model``), what the device sees (``vision``), the device and what leaves
it (``outputs``)."""
