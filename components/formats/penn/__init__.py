"""components.formats.penn"""
