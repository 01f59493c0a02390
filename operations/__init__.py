"""Operating a deployment: backup and restore of every store (``backup``), and free ports
for the private services it starts (``ports``). ``docs/operations.md``.
"""
