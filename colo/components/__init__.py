"""Pulumi components: each translates part of the Plan into resources and computes nothing itself."""
