"""Launching on SkyPilot: the recommended plan as a SkyPilot task (:mod:`.sky_task`, pure,
no SkyPilot import); ``calibrate --sky``'s calibrations, one cluster per GPU
(:mod:`.remote_calibration`: offers, cost, tasks and the orchestration through an injected
launcher; :mod:`.staging`: the gacost the task runs; :mod:`.profile_transfer`: the
profile's way back through the job log), none importing SkyPilot; and SkyPilot's own
check of a task and the real launchers (:mod:`.skypilot`, the one module that imports
``sky``, and only inside its functions: ``gacost[sky]``)."""
