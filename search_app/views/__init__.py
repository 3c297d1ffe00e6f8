"""Views: the parameter model shared by views and artifacts, and view templating.

The modules here are pure (no ``django.db``): ``parameters`` declares, describes and binds
typed inputs; ``templating`` checks and fills ``{{placeholder}}`` templates.
"""
