# A deterministic git session for the preload tests: run by /bin/sh with the preloaded
# allocator inherited by every git process (and sh, seq, sed); its output must match glibc's.
set -e
GIT=/usr/bin/git
$GIT init -q -b main repo
cd repo
for i in $(seq 1 40); do seq 1 "$i" | sed "s/^/file $i line /" > "f$i.txt"; done
mkdir -p sub/dir && seq 1 500 > sub/dir/numbers.txt
$GIT add .
$GIT commit -q -m "initial import"
$GIT checkout -q -b topic
sed -i 's/line 7$/line seven/' f*.txt
$GIT commit -q -am "spell out seven"
$GIT mv f1.txt first.txt
$GIT commit -q -m "rename f1"
$GIT checkout -q main
seq 501 900 >> sub/dir/numbers.txt
$GIT commit -q -am "more numbers"
$GIT merge -q --no-edit topic
$GIT tag -a v1 -m "version one"
$GIT log --graph --stat --format='%H %an <%ae> %ad %s' --date=iso
$GIT diff --stat HEAD~2 HEAD
$GIT diff HEAD~1 HEAD -- f9.txt
$GIT grep -n 'line seven' -- 'f3*.txt'
$GIT blame --porcelain f12.txt | grep -c '^[0-9a-f]\{40\}'
$GIT cat-file -p 'HEAD^{tree}'
$GIT describe --tags
$GIT gc -q
$GIT fsck --full --no-progress
$GIT count-objects -v | grep -v size
$GIT rev-list --all --objects | sort | $GIT hash-object --stdin
