"""Campaigns: specs and run plans, one measured run on any lab, and the runner that resumes and heals.

``benchlib.campaign.spec`` expands a campaign spec into planned runs; ``benchlib.campaign.run``
measures one run (dataset, sampling, the lab's load driver, the run store);
``benchlib.campaign.runner`` runs a whole campaign (folder, lock, events, adaptive repetitions,
sustained-throughput searches, progress). Works alike on the embedded lab and remote labs.
"""

__all__ = ["run", "runner", "spec"]
