"""The HTTP layer: thin handlers that parse a request, call one domain function and map the
result to a status."""
