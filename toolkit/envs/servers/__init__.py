"""The core MCP servers over the core world, one module each, and what every server uses (``base``,
``dates``). The other servers live with their domains in ``toolkit/domains/``; ``toolkit.envs.registry``
lists them all.
"""

from toolkit.envs.servers.calculator import Calculator
from toolkit.envs.servers.calendar import Calendar
from toolkit.envs.servers.chat import Chat
from toolkit.envs.servers.crm import Crm
from toolkit.envs.servers.directory import Directory
from toolkit.envs.servers.email import Email
from toolkit.envs.servers.filesystem import Filesystem
from toolkit.envs.servers.finance import Finance
from toolkit.envs.servers.helpdesk import Helpdesk
from toolkit.envs.servers.shop import Shop
from toolkit.envs.servers.weather import Weather

# The core servers, in order (the first 11 servers everywhere: CORE_SERVERS in toolkit/synth/config.py
# names them); the domain servers follow them in toolkit.envs.registry.
CORE_SERVER_CLASSES = [
    Helpdesk,
    Crm,
    Directory,
    Calendar,
    Email,
    Filesystem,
    Shop,
    Finance,
    Weather,
    Chat,
    Calculator,
]
