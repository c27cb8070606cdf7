"""Offline render: the real program under the Pulumi SDK's mock monitor, with placeholder AWS facts."""
