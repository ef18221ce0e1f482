"""BlingFire: Microsoft's finite-state sentence breaker and word tokenizer (built-in models)."""
