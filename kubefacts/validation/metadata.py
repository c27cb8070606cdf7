"""API machinery's object-metadata limits (apimachinery/pkg/api/validation/objectmeta.go
ValidateAnnotations): all annotations of an object together hold at most 256 KiB."""
from __future__ import annotations

MAX_ANNOTATIONS_BYTES = 256 * 1024

__all__ = ["MAX_ANNOTATIONS_BYTES"]
