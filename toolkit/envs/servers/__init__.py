"""The kit's domain MCP servers, one module each (see ``toolkit.envs.registry``)."""

from toolkit.envs.servers.banking import Banking
from toolkit.envs.servers.budget import Budget
from toolkit.envs.servers.calculator import Calculator
from toolkit.envs.servers.calendar import Calendar
from toolkit.envs.servers.chat import Chat
from toolkit.envs.servers.crm import Crm
from toolkit.envs.servers.directory import Directory
from toolkit.envs.servers.email import Email
from toolkit.envs.servers.filesystem import Filesystem
from toolkit.envs.servers.finance import Finance
from toolkit.envs.servers.food_delivery import FoodDelivery
from toolkit.envs.servers.helpdesk import Helpdesk
from toolkit.envs.servers.iot_devices import IotDevices
from toolkit.envs.servers.issue_tracker import IssueTracker
from toolkit.envs.servers.maps import Maps
from toolkit.envs.servers.marketplace import Marketplace
from toolkit.envs.servers.payments import Payments
from toolkit.envs.servers.retail_chain import RetailChain
from toolkit.envs.servers.shop import Shop
from toolkit.envs.servers.social_media import SocialMedia
from toolkit.envs.servers.trading import Trading
from toolkit.envs.servers.travel_booking import TravelBooking
from toolkit.envs.servers.vehicle import Vehicle
from toolkit.envs.servers.video_meeting import VideoMeeting
from toolkit.envs.servers.weather import Weather

SERVER_CLASSES = [
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
    SocialMedia,
    IotDevices,
    Vehicle,
    IssueTracker,
    VideoMeeting,
    Banking,
    Trading,
    Payments,
    Budget,
    Marketplace,
    RetailChain,
    FoodDelivery,
    TravelBooking,
    Maps,
]
