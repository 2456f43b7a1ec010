"""Loaded by every Python process a test starts (this folder is on PYTHONPATH in tests): loopback only."""

import loopback_guard

loopback_guard.install_in_subprocess()
