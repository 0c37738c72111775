# A deterministic Perl workload for the preload tests (hashes, regexes, sorting, packing,
# closures, core modules); its output must match a run on glibc exactly.
use strict;
use warnings;
use Data::Dumper;
use Digest::MD5 qw(md5_hex);
use List::Util qw(sum max min first reduce);
use POSIX qw(floor);

$Data::Dumper::Sortkeys = 1;
$Data::Dumper::Indent = 1;

my %h;
for my $i (1 .. 50000) {
    $h{"k$i"} = [ ($i) x ($i % 13) ];
    delete $h{ "k" . int($i / 2) } if $i % 3 == 0;
}
my @keys = sort keys %h;
print "hash ", scalar(@keys), " $keys[0] $keys[-1]\n";

my $text = join " ", map { ("alpha", "beta", "gamma", "delta")[ $_ % 4 ] . $_ } 1 .. 20000;
my %count;
$count{$1}++ while $text =~ /\b([a-z]+)\d*7\b/g;
print "regex ", join(",", map {"$_=$count{$_}"} sort keys %count), "\n";
(my $swapped = $text) =~ s/(\w+?)(\d+)/$2$1/g;
print "subst ", md5_hex($swapped), "\n";

my @nums = map { ($_ * 7919) % 10007 } 1 .. 100000;
my @sorted = sort { $a <=> $b or $a cmp $b } @nums;
print "sort $sorted[0] $sorted[-1] ", sum(@sorted[0 .. 99]), " ", max(@nums), " ", min(@nums), "\n";
print "first ", (first { $_ > 10000 } @nums) // "none", " reduce ", (reduce { ($a * 31 + $b) % 1000003 } @nums), "\n";

my $big = "abc" x 300000;
$big .= "xyz" x 1000 for 1 .. 50;
print "string ", length($big), " ", md5_hex($big), "\n";
my @parts = split /b/, substr($big, 0, 90000);
print "split ", scalar(@parts), "\n";

my $packed = pack("N*", 1 .. 5000);
my @unpacked = unpack("N*", $packed);
print "pack ", length($packed), " ", sum(@unpacked), "\n";

my @closures = map { my $n = $_; sub { $n * $_[0] } } 1 .. 1000;
print "closures ", sum(map { $_->(3) } @closures), "\n";

my $tree = { name => "root", kids => [ map { { id => $_, tags => [ 1 .. $_ % 5 ] } } 1 .. 200 ] };
my $dump = Dumper($tree);
print "dumper ", length($dump), " ", md5_hex($dump), "\n";
print "sprintf ", sprintf("%08.3f|%-6s|%x|%e", 3.14159, "ab", 255, 12345.678), "\n";
print "floor ", floor(-2.5), "\n";
print "done\n";
