"""Operating a deployment: backup and restore of every store (``backup``), and a private
``redis-server`` launcher (``redisserver``) that restores and the test harness use.
``docs/operations.md``.
"""
