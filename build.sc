// Mill build of the Chisel RTL (rtl/). `./mill rtl.run` elaborates and writes build/rtl/*.sv.
// Versions: Scala 2.13.15 + Chisel 6.7.0 (+ its compiler plugin); Chisel fetches firtool 1.62.1
// itself (org.chipsalliance:llvm-firtool). Message bundles are generated from rtl/messages.json.
import mill._
import mill.scalalib._

object rtl extends ScalaModule {
  def scalaVersion = "2.13.15"
  val chiselVersion = "6.7.0"

  // (Elaborate reads rtl/variants.json with ujson, which Chisel already depends on)
  def ivyDeps = Agg(ivy"org.chipsalliance::chisel:$chiselVersion")
  def scalacPluginIvyDeps = Agg(ivy"org.chipsalliance:::chisel-plugin:$chiselVersion")
  def scalacOptions = Seq("-language:reflectiveCalls", "-deprecation", "-feature", "-Xcheckinit", "-Ymacro-annotations")

  // hand-written sources: every .scala under rtl/ (shared parts at the top, otc/ oic/ osc/ opc/)
  def sources = T.sources(millSourcePath)

  // message bundles and opcodes, generated from the language-neutral schema (never checked in)
  def schema = T.source(millSourcePath / "messages.json")
  def generator = T.source(millSourcePath / "messages.py")
  def generatedSources = T {
    os.proc("python3", generator().path, "scala", "--schema", schema().path,
      "--out", T.dest / "Messages.scala").call(stdout = os.Inherit)
    Seq(PathRef(T.dest))
  }

  def mainClass = Some("apta.Elaborate")
  // `./mill rtl.run [outdir]` runs from the repo root so relative paths land in build/rtl
  def forkWorkingDir = T.workspace
}
