"""Outputs: where what the device sees goes (console, JSON lines, page, metrics, MQTT).

Each subscribes to the device's event bus (``device/bus.py``).
"""
