"""Launching a recommended plan: the plan as a SkyPilot task (:mod:`.sky_task`, pure, no
SkyPilot import) and SkyPilot's own check of that task (:mod:`.skypilot`, the one module
that imports ``sky``, and only inside its functions: ``gacost[sky]``)."""
