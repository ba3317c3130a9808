"""Reaching the cluster a stack names: its kubeconfig, its API server's identity, an EKS cluster's kubeconfig."""
