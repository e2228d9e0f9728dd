"""svcm: the operator's command-line tool."""
