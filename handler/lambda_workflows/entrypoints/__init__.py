"""Lambda handlers. Thin: parse the event, call the engine, shape the answer."""
