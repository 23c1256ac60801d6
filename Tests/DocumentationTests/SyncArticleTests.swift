// The snippets of the "Sync across devices" article, compiled and run; `snippetsMatchTheArticle` keeps them word for
// word the article's.
import Foundation
import ReactiveDefaults
import TestSupport
import Testing

extension DefaultsKeys {
  static let accent = DefaultsKey<String>("accent", default: "blue")
  static let fontSize = DefaultsKey<Double>("fontSize", default: 13)
  static let sidebarWidth = DefaultsKey<Int>("sidebarWidth", default: 240)
}

/// `folder`: on Linux, and any platform, a folder that Syncthing or Dropbox carries between machines, such as
/// `~/Sync/settings`.
func startSync(of store: DefaultsStore, in folder: URL) -> DefaultsSync {
  let sync = store.sync(.accent, .fontSize, with: .folder(folder))
  // Apple platforms, with the iCloud key-value storage entitlement:
  // let sync = store.sync(.accent, .fontSize, with: .iCloud)
  sync.add(.sidebarWidth)  // more keys, of any value type, at any time
  return sync
}

@Suite struct SyncArticleTests {
  @Test func aFolderCarriesAWriteToAnotherDevice() async throws {
    let folder = URL(fileURLWithPath: NSTemporaryDirectory() + "synced-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: folder) }
    let desktop = DefaultsStore.inMemory()
    let laptop = DefaultsStore.inMemory()
    let syncs = [startSync(of: desktop, in: folder), startSync(of: laptop, in: folder)]
    desktop[.sidebarWidth] = 300
    #expect(await syncs[0].waitUntilIdle(timeout: .seconds(120 * timeoutScale)))
    // The laptop hears of the desktop's file through the folder's watch, or when asked to synchronize.
    syncs[1].synchronize()
    #expect(await syncs[1].waitUntilIdle(timeout: .seconds(120 * timeoutScale)))
    #expect(laptop[.sidebarWidth] == 300)
  }

  @Test func theCloudModelRunsAsWritten() async throws {
    let cloud = MemoryCloud()
    let phone = DefaultsStore.inMemory()
    let laptop = DefaultsStore.inMemory()
    let syncs = [phone.sync(.accent, with: cloud.connect()), laptop.sync(.accent, with: cloud.connect())]
    phone[.accent] = "green"
    _ = await syncs[0].waitUntilIdle(timeout: .seconds(10))  // the phone's write is pushed to its local copy
    cloud.deliverAll()  // uploaded, then downloaded by the laptop
    _ = await syncs[1].waitUntilIdle(timeout: .seconds(10))  // the laptop's sync pulled it
    #expect(laptop[.accent] == "green")
  }

  @Test func snippetsMatchTheArticle() throws {
    try expectSnippets(ofArticle: "SyncAcrossDevices.md", in: #filePath, atLeast: 2)
  }
}
