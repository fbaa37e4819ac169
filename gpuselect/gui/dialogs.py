"""File dialogs that never read a file's contents.

Qt's own (non-native) file dialog asks its icon provider for each entry's icon and type, and the
default provider sniffs the contents of files without a known suffix (``QMimeDatabase``): typing
``/proc/`` made it read ``/proc/kmsg``, which blocks forever, and froze the window. These icons
and types come from the file's kind alone.
"""

from __future__ import annotations

from PySide6.QtCore import QFileInfo
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QFileDialog, QFileIconProvider, QTreeView, QWidget


class KindOnlyIcons(QFileIconProvider):
    """A folder, a drive or a file: nothing that needs the file opened."""

    def icon(self, what: QFileInfo | QFileIconProvider.IconType) -> QIcon:
        if isinstance(what, QFileInfo):
            what = QFileIconProvider.IconType.Folder if what.isDir() else QFileIconProvider.IconType.File
        return super().icon(what)

    def type(self, info: QFileInfo) -> str:
        return "Folder" if info.isDir() else "File"


def _dialog(
    parent: QWidget | None, title: str, start: str, filters: str, save: bool, chosen: list[str] | None = None
) -> str:
    dlg = QFileDialog(parent, title, start, filters)
    dlg.setOption(QFileDialog.Option.DontUseNativeDialog, True)  # the provider applies to Qt's dialog only
    dlg.setIconProvider(KindOnlyIcons())
    dlg.resize(900, 520)
    for view in dlg.findChildren(QTreeView):  # the detail view's date column was cut to "24 11 2…6 22:18"
        for column, width in enumerate((360, 90, 80, 170)):
            view.setColumnWidth(column, width)
    if save:
        dlg.setAcceptMode(QFileDialog.AcceptMode.AcceptSave)
        dlg.setFileMode(QFileDialog.FileMode.AnyFile)
        # The caller asks, saying whether the file is one of ours (Qt's prompt replaced a user's notes)
        dlg.setOption(QFileDialog.Option.DontConfirmOverwrite, True)
    else:
        dlg.setFileMode(QFileDialog.FileMode.ExistingFile)
    if not dlg.exec():
        return ""
    files = dlg.selectedFiles()
    if chosen is not None:
        chosen.append(dlg.selectedNameFilter())
    return files[0] if files else ""


def save_file_name(
    parent: QWidget | None, title: str, start: str, filters: str, chosen: list[str] | None = None
) -> str:
    """Where to save ('' if cancelled); ``chosen`` receives the file type picked. It does not ask
    before replacing a file: the caller does, knowing whether the file is one of gpuselect's."""
    return _dialog(parent, title, start, filters, save=True, chosen=chosen)


def open_file_name(parent: QWidget | None, title: str, start: str, filters: str) -> str:
    """Which file to open ('' if cancelled)."""
    return _dialog(parent, title, start, filters, save=False)
