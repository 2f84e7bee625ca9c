"""The kit's domain MCP servers, one module each (see ``toolkit.envs.registry``)."""

from toolkit.envs.servers.calculator import Calculator
from toolkit.envs.servers.crm import Crm
from toolkit.envs.servers.helpdesk import Helpdesk

SERVER_CLASSES = [Helpdesk, Crm, Calculator]
