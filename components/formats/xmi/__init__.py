"""components.formats.xmi"""
