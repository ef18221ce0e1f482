"""components.metrics"""
