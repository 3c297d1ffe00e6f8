"""The ``--capabilities`` option shared by the commands that mint keys."""
from catalog_app.models import CAPABILITIES


def add_capabilities_option(parser) -> None:
    parser.add_argument("--capabilities", default=",".join(CAPABILITIES),
                        help=f"comma-separated subset of {', '.join(CAPABILITIES)} (default: all)")


def parse_capabilities(raw: str) -> list[str]:
    return [name.strip() for name in raw.split(",") if name.strip()]
