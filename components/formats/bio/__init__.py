"""components.formats.bio"""
