"""Where slime users look for the RL algorithms: they live in :mod:`vime.algorithms`."""

from vime.algorithms import *  # noqa: F403
from vime.algorithms import __all__  # noqa: F401
