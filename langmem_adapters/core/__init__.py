"""Backend-independent rules shared by every store: validation, filters, TTL, vectors, batching."""
