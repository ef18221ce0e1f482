"""components.crfsuite"""
