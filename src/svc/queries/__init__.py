"""Queries: parse request parameters, build SQL (only here, with bound parameters), execute,
and shape the result."""
