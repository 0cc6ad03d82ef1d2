"""Tool machinery (FunctionTool) and Lookout's tools.

Names are imported from the modules that define them (``from tools.function_tool import
FunctionTool``), so perception code that imports none of the tools does not pay for pydantic
and the session.
"""
