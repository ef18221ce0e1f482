"""components.formats.jats"""
