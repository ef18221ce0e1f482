"""components.formats.anatem"""
