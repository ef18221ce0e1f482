"""components.corpora"""
