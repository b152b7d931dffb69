"""Deterministic simulation: random workflow programs under random AWS faults, on the real
adapters and handlers (moto), checked against a fault-free run and a pure model.

``python -m tests.simulation.chaos --seeds N`` runs N cases; ``make chaos`` does the same.
"""
