from catalog_app.management.activation_command import ActivateCommand


class Command(ActivateCommand):
    help = ("Make VERSION the active version of collection NAME (refused, with the reasons, if the catalog would "
            "not load).")
    family = "collection"
