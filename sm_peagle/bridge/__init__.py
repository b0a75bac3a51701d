"""Bridges to other SDKs, each an optional extra imported only when used."""
