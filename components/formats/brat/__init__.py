"""components.formats.brat"""
