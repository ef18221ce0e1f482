"""components.formats.genetag"""
