package dev.cohort.bench;

import dev.cohort.cli.Commands;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

/**
 * What every benchmark that starts workers has: {@code --help} and {@code --version} (picocli passes
 * these {@code @Command} attributes on to subclasses) and where its workers run ({@link Nodes}).
 */
@Command(mixinStandardHelpOptions = true, versionProvider = Commands.Version.class)
abstract class BenchCommand implements Callable<Integer> {

    @Mixin
    Nodes nodes = new Nodes();
}
