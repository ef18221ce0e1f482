"""components.formats.bc2"""
