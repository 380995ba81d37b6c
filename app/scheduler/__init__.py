"""The standalone scheduler: the profiles scheduling the pods that name them in spec.schedulerName."""
