"""End-to-end harness for the real Claude Code CLI: a scripted Messages API endpoint
(`endpoint.py`) and a driver that runs `claude -p` against it with mnemo installed (`driver.py`)."""
