"""Shipped named-entity taggers (CRF over rich token features): genes and anatomy."""
