"""components.formats.json"""
