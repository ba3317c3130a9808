"""Pulumi components: each translates a part of the plan into resources and computes nothing itself."""
