"""The instance layer: the state machine, the runner's advance, the instance service, children,
slots, schedules, deletion, and the ports (:mod:`.ports`) the adapters implement.

Imports the replay core and the engine's vocabulary only, never an adapter: the stores, the
queue and the scheduler it drives are injected behind the ports.
"""
