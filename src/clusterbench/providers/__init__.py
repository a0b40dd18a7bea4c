"""Providers make hosts for a topology (`local`: namespaces + bridge) or attach to existing ones."""
