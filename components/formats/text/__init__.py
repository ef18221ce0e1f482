"""components.formats.text"""
