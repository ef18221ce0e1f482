"""components.rules"""
