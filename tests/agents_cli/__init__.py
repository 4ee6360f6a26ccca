"""Driving Gemini CLI, Codex CLI and opencode offline against a scripted model API."""
