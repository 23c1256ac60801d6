import Foundation
import HistoryChecker
import ReactiveDefaults

/// Whether the histories run over file stores (`check --file-stores`, passed to the workers as
/// `HISTORY_FILE_STORES=1`): each checked suite is then a file store (``HistoryPlan/filePath(_:root:)``), the tools
/// address it with `--file`, and the plain writer is another program that replaces its file without the lock.
let historyUsesFileStores = ProcessInfo.processInfo.environment["HISTORY_FILE_STORES"] == "1"

/// Whether a label stands for a file store in this history (a side target keeps its kind).
func isFileStore(_ label: String) -> Bool {
  HistoryPlan.isSideTarget(label) ? HistoryPlan.isSideFileStore(label) : historyUsesFileStores
}

/// The store of a history's suite: by suite name, or the file store of its file below `folder`.
func historyStore(_ label: String, folder: String) -> DefaultsStore? {
  isFileStore(label)
    ? DefaultsStore(fileURL: URL(fileURLWithPath: HistoryPlan.filePath(label, root: folder)))
    : DefaultsStore(suiteName: HistoryPlan.suiteName(label))
}

/// How `rdefaults` names a history's suite: its name, or `--file PATH`.
func toolTarget(_ label: String, folder: String) -> [String] {
  isFileStore(label) ? ["--file", HistoryPlan.filePath(label, root: folder)] : [HistoryPlan.suiteName(label)]
}

/// The file a history's suite is kept in.
func historyFile(_ label: String, folder: String) -> String {
  isFileStore(label) ? HistoryPlan.filePath(label, root: folder) : folder + "/\(HistoryPlan.suiteName(label)).plist"
}

/// Whether the workers' plain `UserDefaults` calls take the library's turn at corelibs' preferences
/// (``DefaultsStore/withPreferencesTurn(_:)``); `HISTORY_RACING_PLAIN_CALLS=1` lets them race, as an app's do.
let historySerializesPlainCalls = ProcessInfo.processInfo.environment["HISTORY_RACING_PLAIN_CALLS"] != "1"
